# tools-call-with-progress: the suite wants 3 increasing progress notifications. The pipeline
# reports one before each of its stages (InvocationControl::progress); the tool only takes a
# moment, as the scenario's reference does.
import time


def run(args):
    time.sleep(0.1)
    return {"text": "Tool with progress completed"}
