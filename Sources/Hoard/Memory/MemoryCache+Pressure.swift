extension MemoryCache {
    /// Gives memory back after a memory-pressure signal: each shard evicts, in its
    /// policy's order, down to `fraction` of the cost it holds (of its entry count,
    /// when its values cost nothing), reporting ``EvictionReason/memoryPressure``.
    func relieve(_ level: MemoryPressureLevel, fraction: Double) {
        let observers = self.observers.ifActive
        for i in 0..<shards.count {
            shards.withLock(i) { shard in
                if shard.totalCost > 0 {
                    let target = Int((Double(shard.totalCost) * fraction).rounded(.down))
                    shard.evict(
                        toCount: .max, toCost: target, reason: .memoryPressure, protecting: -1, observers: observers)
                } else {
                    let target = Int((Double(shard.count) * fraction).rounded(.down))
                    shard.evict(
                        toCount: target, toCost: .max, reason: .memoryPressure, protecting: -1, observers: observers)
                }
            }
        }
    }
}
