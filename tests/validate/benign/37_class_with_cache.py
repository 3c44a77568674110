class RateTable:
    def __init__(self, rates):
        self._rates = dict(rates)
        self._cache = {}

    def convert(self, amount, currency):
        if currency not in self._cache:
            self._cache[currency] = self._rates.get(currency, 1.0)
        return amount * self._cache[currency]

    def __repr__(self):
        return f"RateTable({len(self._rates)} rates)"

table = RateTable({"EUR": 0.9, "GBP": 0.8})
print(table.convert(10, "EUR"), table)
