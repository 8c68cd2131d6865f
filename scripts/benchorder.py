"""The order in which the bench scripts run their contenders."""


def balanced_order(names, r):
    """The order of run `r`: row `r` (mod len) of a balanced Latin square (Williams design),
    so that over len(names) runs every contender takes every place once and follows every
    other contender once. Who runs just before a command matters on a virtual machine that
    hands freed memory back to its host (virtio-balloon free page reporting): a command that
    follows one which used no page cache (`dd oflag=direct`) finds the memory freed before it
    returned to the host and pays the host's page faults on every page it fills, measured
    here as 1.5-2.5 s on a 10 GiB copy whichever command it was."""
    n = len(names)
    # First row 0, 1, n-1, 2, n-2, ...; row r adds r to each. For odd n the rows and their
    # mirror images together are balanced, so odd runs go backwards.
    first, lo, hi = [0], 1, n - 1
    while len(first) < n:
        first.append(lo)
        lo += 1
        if len(first) < n:
            first.append(hi)
            hi -= 1
    row = [names[(i + r) % n] for i in first]
    return row[::-1] if n % 2 and (r // n) % 2 else row
