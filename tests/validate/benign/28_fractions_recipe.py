from fractions import Fraction

recipe = {"flour": Fraction(3, 4), "sugar": Fraction(1, 3)}
scale = Fraction(3, 2)
for ingredient, cups in recipe.items():
    print(ingredient, cups * scale)
