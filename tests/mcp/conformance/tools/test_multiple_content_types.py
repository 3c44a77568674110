# tools-call-mixed-content: the suite wants text, image and resource blocks in one result; an
# Airlock tool answers one JSON object: expected to fail (expected-failures.yaml).
def run(args):
    return {"text": "Multiple content types test:", "image": {"mimeType": "image/png"},
            "resource": {"uri": "test://mixed-content-resource"}}
