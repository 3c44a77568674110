class Shape:
    def __init__(self, name):
        self.name = name

    def area(self):
        return 0.0


class Rectangle(Shape):
    def __init__(self, w, h):
        super().__init__("rectangle")
        self.w, self.h = w, h

    def area(self):
        return self.w * self.h


print([s.area() for s in (Shape("dot"), Rectangle(2, 3))])
