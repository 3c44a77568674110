import unicodedata

def strip_accents(text):
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c))

print(strip_accents("Crème brûlée à la française"))
