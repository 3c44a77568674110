import statistics

values = [12.5, 13.1, 9.8, 15.2, 11.0, 14.4]
report = {
    "mean": statistics.mean(values),
    "median": statistics.median(values),
    "stdev": round(statistics.stdev(values), 3),
}
for key, value in report.items():
    print(f"{key}: {value}")
