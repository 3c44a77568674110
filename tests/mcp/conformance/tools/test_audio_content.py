# tools-call-audio: the suite wants a content block of type audio; as for the image, an Airlock
# tool can only answer JSON: expected to fail (expected-failures.yaml).
WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA="


def run(args):
    return {"type": "audio", "data": WAV, "mimeType": "audio/wav"}
