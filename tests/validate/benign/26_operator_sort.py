import operator

people = [("ann", 31), ("bob", 25), ("cy", 40)]
by_age = sorted(people, key=operator.itemgetter(1))
total_age = sum(map(operator.itemgetter(1), people))
print(by_age, total_age)
