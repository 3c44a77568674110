import string

template = string.Template("Dear $name, your order $order has shipped.")
for name, order in [("Ann", 17), ("Bob", 23)]:
    print(template.substitute(name=name, order=order))
print(string.ascii_lowercase[:5], string.digits)
