@testable import Hoard

extension MemoryCache {
    /// Runs `body` on shard `i` under its lock, after the shard has applied its
    /// buffered W-TinyLFU hits: `body` sees the policy's state as it would be had
    /// every hit been applied when it happened.
    func withAppliedHits<Result: Sendable>(
        shard i: Int = 0, _ body: (inout _MemoryShard<Key, Value>) -> Result
    ) -> Result {
        shards.withLock(i) { shard in
            shard.applyPendingHits()
            return body(&shard)
        }
    }
}
