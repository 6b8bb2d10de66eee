#if Redis
/// Server-assisted invalidation on a Redis Cluster: one tracking connection per
/// primary (a write is tracked only by clients of the node that runs it), following
/// the primaries as they change.
///
/// Each primary gets a ``_RedisSubscriber`` that carries tracking invalidations only
/// (`CLIENT TRACKING on REDIRECT <itself> BCAST PREFIX`, then `SUBSCRIBE
/// __redis__:invalidate`); the namespaces' pub/sub channels stay on the store's main
/// subscriber. When the set of primaries changes (a replica took over, a node was
/// added) the tracker of a node that left is closed and a new primary gets one, whose
/// subscription reports `RemoteInvalidation.missed`: writes the new primary took
/// before it was tracked were not seen.
actor _RedisClusterTracker {
    private let makeSubscriber:
        @Sendable (
            _ address: _RedisCluster.Address, _ reportsGap: Bool, _ onTrouble: @escaping @Sendable () -> Void
        ) -> _RedisSubscriber
    /// The cluster whose primaries are tracked, once ``sync(cluster:)`` named it.
    private var cluster: _RedisCluster?
    private var trackers: [_RedisCluster.Address: _RedisSubscriber] = [:]
    /// Whether the first set of primaries has been installed: later trackers report a gap.
    private var started = false
    private var isShutdown = false

    init(
        makeSubscriber:
            @escaping @Sendable (
                _ address: _RedisCluster.Address, _ reportsGap: Bool, _ onTrouble: @escaping @Sendable () -> Void
            ) -> _RedisSubscriber
    ) {
        self.makeSubscriber = makeSubscriber
    }

    /// Starts a tracker per primary of `cluster` (reading its map when needed), or
    /// brings the existing ones up to date with the streams.
    func sync(cluster: _RedisCluster) async {
        self.cluster = cluster
        if !started, !isShutdown, let primaries = try? await cluster.primaries() {
            await reconcile(primaries)
        }
        for tracker in trackers.values { await tracker.sync() }
    }

    /// Makes the trackers those of `primaries`.
    func reconcile(_ primaries: [_RedisCluster.Address]) async {
        guard !isShutdown else { return }
        let wanted = Set(primaries)
        for (address, tracker) in trackers where !wanted.contains(address) {
            trackers[address] = nil
            await tracker.shutdown(finishingStreams: false)
        }
        // A tracker that loses its node has the map read again: if a replica took
        // over, the map's new primaries replace the lost one here.
        let cluster = self.cluster
        let onTrouble: @Sendable () -> Void = { Task { try? await cluster?.refreshMap() } }
        for address in primaries where trackers[address] == nil {
            let tracker = makeSubscriber(address, started, onTrouble)
            trackers[address] = tracker
            await tracker.sync()
        }
        started = true
    }

    /// Closes every tracker; the streams are finished by the main subscriber.
    func shutdown() async {
        isShutdown = true
        for tracker in trackers.values { await tracker.shutdown(finishingStreams: false) }
        trackers = [:]
    }
}
#endif
