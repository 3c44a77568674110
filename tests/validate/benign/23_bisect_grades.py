import bisect

BREAKPOINTS = [60, 70, 80, 90]
GRADES = "FDCBA"

def grade(score):
    return GRADES[bisect.bisect(BREAKPOINTS, score)]

print([grade(s) for s in (33, 99, 77, 70, 89, 90, 100)])
