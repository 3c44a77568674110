import re

EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.]+")

def find_emails(text):
    return sorted(set(EMAIL.findall(text)))

with open("mail.txt") as f:
    for address in find_emails(f.read()):
        print(address)
