"""gpuready's own platforms as plugins (installed as ``gpuready_platforms``): one module per platform, each defining
the :class:`gpuready_components.platforms.Platform` that an entry point of the group ``gpuready.platforms`` names in
``pyproject.toml``, exactly as a third party's platform would be named in its own package.

These modules sit above every other layer (components, stacks, the SDK): a descriptor holds the objects a platform is
made of, and imports what needs a cloud SDK (its component, stack program, smoke targets, catalog refresh) only inside
the functions that hand them out. :mod:`.clouds` holds the pieces the platforms of one cloud share.
"""
