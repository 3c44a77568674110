import time

def run_with_budget(steps, seconds):
    deadline = time.monotonic() + seconds
    done = 0
    for _ in range(steps):
        if time.monotonic() > deadline:
            break
        done += 1
    return done

print(run_with_budget(1000, 0.5))
