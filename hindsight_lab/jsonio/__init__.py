"""Bounded JSON reading and writing shared by every reader of recorded files (the dataset adapters, the memory's
export and import, the labelled conflict pairs): :mod:`.limits` bounds what a file may hold, :mod:`.reading` reads
JSON and JSON Lines under those bounds and names the file, line and field in every error. It imports nothing of the
project but its errors, so the engine may use it."""
