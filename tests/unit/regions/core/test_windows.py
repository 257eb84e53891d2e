"""A board's time window as the catalog stores it."""

from regions.core.windows import Period, WindowSpec, decode_window, encode_window, window_error


def test_windows_round_trip_and_rules() -> None:
    rolling = WindowSpec(Period.ROLLING, 7)
    assert encode_window(rolling) == "rolling:7d"
    assert decode_window("rolling:7d") == rolling
    assert decode_window(encode_window(WindowSpec(Period.WEEKLY))) == WindowSpec(Period.WEEKLY)
    assert decode_window(None) is None
    assert window_error(WindowSpec(Period.ROLLING)) is not None
    assert window_error(WindowSpec(Period.DAILY, 3)) is not None
    assert window_error(rolling) is None
