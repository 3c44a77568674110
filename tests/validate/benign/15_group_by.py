import itertools
import json

with open("orders.json") as f:
    orders = sorted(json.load(f), key=lambda o: o["customer"])

totals = {
    customer: sum(o["amount"] for o in group)
    for customer, group in itertools.groupby(orders, key=lambda o: o["customer"])
}
print(json.dumps(totals, sort_keys=True))
