from datetime import date, timedelta

def business_days(start, end):
    day = start
    count = 0
    while day <= end:
        if day.weekday() < 5:
            count += 1
        day += timedelta(days=1)
    return count

print(business_days(date(2024, 1, 1), date(2024, 1, 31)))
