"""chesspipe's version: the one place it is written.

It crosses every boundary the project has: manifests, labels and reports record it, HTTP requests
name it, and the engine gives it in its UCI `id`.
"""

__version__ = "0.6.0"
