"""A count and its noun as a person writes them: "1 file", "2 files", "0 passages"."""


def counted(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
