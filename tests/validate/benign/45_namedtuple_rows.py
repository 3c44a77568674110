from collections import namedtuple
import csv

Row = namedtuple("Row", ["city", "temp"])
with open("weather.csv", newline="") as f:
    rows = [Row(city, float(temp)) for city, temp in csv.reader(f)]
hottest = max(rows, key=lambda r: r.temp)
print(hottest._asdict())
