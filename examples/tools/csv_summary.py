"""Summarises CSV text: row count, columns, and min/max/mean of the numeric ones. No network."""
import csv
import io
import statistics


def run(args):
    rows = list(csv.DictReader(io.StringIO(args["csv"])))
    columns = list(rows[0].keys()) if rows else []
    numeric = {}
    for column in columns:
        values = []
        for row in rows:
            try:
                values.append(float(row[column]))
            except (TypeError, ValueError):
                break
        else:
            if values:
                numeric[column] = {"min": min(values), "max": max(values),
                                   "mean": round(statistics.fmean(values), 3)}
    return {"rows": len(rows), "columns": columns, "numeric": numeric}
