# Reports who the token in args["var"] (an exchanged JWT) speaks for: its claims, never the
# token itself (the approvals test checks the credential was exchanged from the right user).
import base64
import json
import os


def run(args):
    token = os.environ.get(args.get("var", "UPSTREAM_TOKEN"), "")
    parts = token.split(".")
    if len(parts) != 3:
        return {"claims": None}
    payload = parts[1] + "=" * (-len(parts[1]) % 4)
    claims = json.loads(base64.urlsafe_b64decode(payload))
    return {"claims": {"sub": claims.get("sub"), "act": claims.get("act"), "aud": claims.get("aud")}}
