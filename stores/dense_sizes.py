"""The sizes of a durable dense build (`stores.dense_staging`, `workflows.dense_index`), in a module
of their own so the command line reads them without loading numpy, Chroma or the model."""

BATCH_CHUNKS = 256  # chunks per batch (one activity): ~10 s of MiniLM on this machine's 2 cores
MODEL_BATCH = 64  # texts per model call inside a batch; a stop request is noticed between calls
DURABLE_MIN_CHUNKS = 20_000  # `quarry index NAME --dense` runs as durable work from this many chunks on
SEGMENT_BATCHES = 200  # batches per workflow run before it continues as new (its history stays small)
BATCHES_IN_FLIGHT = 8  # batches a build schedules at once: enough to keep several workers busy
