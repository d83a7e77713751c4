"""Reusable Pulumi components for GPU compute, one folder per platform.

Each platform folder has the same shape: ``args.py`` (typed, documented inputs), ``facts.py`` (the platform's facts
in one table), ``validation.py`` (construction-time checks) and ``component.py`` (the ComponentResource). Cloud SDKs
are imported by the platform folders only, so importing ``components`` loads none of them.
"""
