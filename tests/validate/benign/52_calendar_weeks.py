from datetime import date, datetime

def iso_week(day):
    year, week, _ = day.isocalendar()
    return f"{year}-W{week:02d}"

stamps = ["2024-01-01", "2024-03-15", "2024-12-30"]
print([iso_week(datetime.strptime(s, "%Y-%m-%d").date()) for s in stamps], date.today().year > 2000)
