# tools-call-simple-text: a text block (Airlock answers structuredContent and its JSON text).
def run(args):
    return {"text": "This is a simple text response for testing."}
