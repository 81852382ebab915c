"""Modal screens: each is opened by the app and returns its result through ``dismiss``."""
