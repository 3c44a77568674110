# tools-call-image: the suite wants a content block of type image. An Airlock tool returns one
# JSON object (structuredContent and its text), so this can only be JSON describing an image:
# expected to fail (expected-failures.yaml).
PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


def run(args):
    return {"type": "image", "data": PIXEL, "mimeType": "image/png"}
