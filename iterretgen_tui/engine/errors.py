"""Engine errors a user can act on. Kept free of heavy imports: the CLI imports this
module to recognise them before anything slow has loaded."""


class DeviceUnavailable(RuntimeError):
    """The device asked for cannot be used by this installation."""
