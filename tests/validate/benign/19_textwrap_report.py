import textwrap

paragraph = ("Airlock runs each tool call in a sandbox and checks generated code "
             "before it runs. This report wraps long text for a terminal.")
print(textwrap.fill(paragraph, width=40))
print(textwrap.indent(textwrap.dedent("""
    line one
    line two
"""), "> "))
