"""A report tool whose output carries an email address and an API key: DLP redacts them
before the agent (and the model) sees the result."""


def run(args):
    customer = args.get("customer", "ACME")
    return {
        "summary": "Account %s is current. Contact: jane.doe@example.com" % customer,
        "debug": "config loaded with key AKIAZ7Q3PLDX4RS6TB2V and region eu-west-1",
    }
