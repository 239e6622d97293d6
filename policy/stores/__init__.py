"""Where a guard keeps each scope's loop state: in memory, in files, or in Redis.

``MemoryStore`` (one process), ``FileStore`` (hook processes on one machine),
``RedisStore`` (the workers of a gateway; needs the ``redis`` extra).
"""
