import html

rows = [("<b>bold</b>", 1), ("a & b", 2)]
cells = "".join(f"<tr><td>{html.escape(name)}</td><td>{n}</td></tr>" for name, n in rows)
with open("table.html", "w") as f:
    f.write(f"<table>{cells}</table>")
