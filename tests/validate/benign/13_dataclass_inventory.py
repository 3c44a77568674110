from dataclasses import dataclass, field

@dataclass
class Item:
    name: str
    quantity: int = 0
    tags: list = field(default_factory=list)

    def restock(self, n):
        self.quantity += n

stock = [Item("bolt", 10), Item("nut", 3, ["small"])]
for item in stock:
    item.restock(5)
print([(i.name, i.quantity) for i in stock])
