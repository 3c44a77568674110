# tools-call-embedded-resource: the suite wants a content block of type resource; an Airlock
# tool can only answer JSON: expected to fail (expected-failures.yaml).
def run(args):
    return {
        "type": "resource",
        "resource": {"uri": "test://embedded-resource", "mimeType": "text/plain",
                     "text": "This is an embedded resource content."},
    }
