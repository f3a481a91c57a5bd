"""Helpers shared by the binding's tests."""

import threading


def run_threads(target, count):
    """Runs target(i) on count threads; re-raises the first exception of any of them."""
    errors = []

    def wrapper(i):
        try:
            target(i)
        except BaseException as e:  # noqa: BLE001 (handed to the main thread)
            errors.append(e)

    threads = [threading.Thread(target=wrapper, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
        assert not t.is_alive(), "a thread hung"
    if errors:
        raise errors[0]
