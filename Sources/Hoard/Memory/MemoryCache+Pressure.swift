extension MemoryCache {
    /// Gives memory back after a memory-pressure signal: each shard evicts, in its
    /// policy's order, down to `fraction` of the cost it holds (of its entry count,
    /// when its values cost nothing), reporting ``EvictionReason/memoryPressure``.
    /// At 0 every entry goes, those that cost nothing too.
    func relieve(fraction: Double) {
        evictEachShard(reason: .memoryPressure) { _, count, cost in
            if fraction == 0 { return (0, 0) }
            func part(_ total: Int) -> Int { Int((Double(total) * fraction).rounded(.down)) }
            return cost > 0 ? (.max, part(cost)) : (part(count), .max)
        }
    }
}
