import Foundation
import Synchronization

/// The reads below memory in progress, one per key and filters: concurrent reads of
/// a key with the same `maxAge`, `newerThan` and fetch-or-not share one walk of the
/// local stores, the remote stores and the fetch.
///
/// The first reader leads: it runs the walk itself and hands the result to every
/// reader that joined meanwhile. A reader joins only a walk whose ticket
/// no change of the key has passed (``_CacheWriter/hasChanged(_:since:)``), so a
/// read that starts after a write never receives what a walk begun before it
/// found. The flight joiners wait on is made by the first of them: a walk nobody
/// joins costs one dictionary entry, made and removed under the lock.
///
/// Inlinable, with the read path that uses it, so that it is specialised for the
/// cache's key and value types in the caller's module.
@usableFromInline
final class _SharedReads<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    /// What makes two reads the same read.
    ///
    /// The filters are kept as canonical bit patterns, so that a name always equals
    /// itself: a NaN `maxAge` or `newerThan` (never equal to itself as a number)
    /// would otherwise register a walk that `finish` could not find again, one
    /// leaked entry per read, and no two such reads would share a walk. (The reads
    /// refuse NaN filters before they get here; the names do not rely on it.)
    @usableFromInline
    struct Name: Hashable, Sendable {
        @usableFromInline var key: Key
        @usableFromInline var maxAge: UInt64?
        @usableFromInline var newerThan: UInt64?
        @usableFromInline var fetches: Bool

        @inlinable  // CacheBenchmarks "disk hit promote 1KiB: Cache async value(for:)"
        init(key: Key, maxAge: TimeInterval?, newerThan: Date?, fetches: Bool) {
            self.key = key
            self.maxAge = maxAge.map(Self.canonical)
            self.newerThan = newerThan.map { Self.canonical($0.timeIntervalSinceReferenceDate) }
            self.fetches = fetches
        }

        /// `value`'s bit pattern, with every NaN as one and both zeros as one.
        @inlinable
        static func canonical(_ value: Double) -> UInt64 {
            value.isNaN ? Double.nan.bitPattern : (value == 0 ? 0 : value.bitPattern)
        }
    }

    /// A walk in progress: the leader's ticket, and the flight its joiners wait on
    /// (made by the first joiner).
    @usableFromInline
    struct Walk: Sendable {
        @usableFromInline var ticket: UInt64
        @usableFromInline var flight: _Flight<Value>?

        @inlinable  // CacheBenchmarks "disk hit promote 1KiB: Cache async value(for:)"
        init(ticket: UInt64) {
            self.ticket = ticket
        }
    }

    /// What a reader does: wait on a walk in progress, or lead one (registered,
    /// so that others may join it, unless another walk holds the name).
    @usableFromInline
    enum Role {
        case joins(_Flight<Value>)
        case leads(registered: Bool)
    }

    @usableFromInline let walks = Mutex<[Name: Walk]>([:])

    @inlinable  // CacheBenchmarks "disk hit promote 1KiB: Cache async value(for:)"
    init() {}

    /// The walk to join for `name`, if one is running and `mayJoin` accepts its
    /// ticket; otherwise the caller leads a walk under `ticket`, registered for
    /// `name` when no other walk is.
    @inlinable  // CacheBenchmarks "disk hit promote 1KiB: Cache async value(for:)"
    func join(_ name: Name, ticket: UInt64, mayJoin: (UInt64) -> Bool) -> Role {
        walks.withLock { walks -> Role in
            guard var walk = walks[name] else {
                walks[name] = Walk(ticket: ticket)
                return .leads(registered: true)
            }
            guard mayJoin(walk.ticket) else { return .leads(registered: false) }
            if let flight = walk.flight { return .joins(flight) }
            let flight = _Flight<Value>()
            walk.flight = flight
            walks[name] = walk
            return .joins(flight)
        }
    }

    /// Ends a walk the caller led with `result`: a registered one is forgotten,
    /// then its joiners (if any) resume.
    @inlinable  // CacheBenchmarks "disk hit promote 1KiB: Cache async value(for:)"
    func finish(_ name: Name, registered: Bool, with result: Result<Value, any Error>) {
        guard registered else { return }
        let flight = walks.withLock { $0.removeValue(forKey: name)?.flight }
        flight?.finish(result)
    }
}

/// What the readers that joined a walk below memory receive when its leader
/// stopped because its own task was cancelled: not an outcome of the walk, so each
/// of them walks again (``Cache``'s `sharedEntryBelowMemory`), unless it is
/// cancelled too.
@usableFromInline
struct _WalkLeaderCancelled: Error {
    @inlinable  // CacheBenchmarks "disk hit promote 1KiB: Cache async value(for:)"
    init() {}
}
