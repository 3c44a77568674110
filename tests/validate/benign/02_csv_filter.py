import csv

with open("/work/people.csv", newline="") as src, open("/work/adults.csv", "w", newline="") as dst:
    reader = csv.DictReader(src)
    writer = csv.DictWriter(dst, fieldnames=reader.fieldnames)
    writer.writeheader()
    for row in reader:
        if int(row["age"]) >= 18:
            writer.writerow(row)
