# Uses its postgres credential the way a report tool would, and tries what it was not
# granted: another table, and a write to the granted one.
import os
import subprocess

PSQL = "/usr/lib/postgresql/15/bin/psql"


def query(url, sql):
    r = subprocess.run([PSQL, url, "-XAtc", sql], capture_output=True, text=True, timeout=20)
    return r.stdout.strip(), r.stderr.strip()[:300]


def run(args):
    url = os.environ["ORDERS_DB_URL"]
    user, user_err = query(url, "select current_user")
    orders, orders_err = query(url, "select count(*) from orders")
    _, payroll_err = query(url, "select count(*) from payroll")
    _, insert_err = query(url, "insert into orders values (99)")
    return {"user": user, "user_error": user_err, "orders": orders, "orders_error": orders_err,
            "payroll_error": payroll_err, "insert_error": insert_err}
