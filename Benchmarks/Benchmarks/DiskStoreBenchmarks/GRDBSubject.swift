import Benchmark
import Dispatch
import Foundation
import GRDB
import Hoard

/// Baseline for DiskStore's reads: GRDB's `DatabasePool` (WAL, a pool of read
/// connections beside one writer) on the index file a DiskStore created and
/// filled, each get one `pool.read` running the store's own lookup (`SELECT id,
/// stored_at, expires_at, size, value, blob, crc FROM entries WHERE namespace = ?
/// AND key = ?`, a cached statement, namespace and key bound as UTF-8 blobs as the
/// store binds them) and copying the value out. GRDB's default configuration
/// (up to 5 readers); each `read` runs in a transaction of its own, as GRDB does.
/// Reads only: it has no write rows.
final class GRDBSubject: BenchSubject {
    let directory: URL
    let pool: DatabasePool
    let keys: [Data]
    var stream: KeyStream
    let namespace = Data(DiskStore.defaultNamespace.utf8)
    static let lookup = """
        SELECT id, stored_at, expires_at, size, value, blob, crc FROM entries
        WHERE namespace = ?1 AND key = ?2
        """

    init(shape: Shape) throws {
        let filled = try StoreSubject(shape: shape)
        directory = filled.directory
        keys = filled.keys.map { Data($0.utf8) }
        stream = filled.stream
        pool = try DatabasePool(path: directory.appendingPathComponent("store/index.sqlite").path)
    }

    /// One get: the lookup in a `read` of its own, the value copied out.
    static func get(_ pool: DatabasePool, namespace: Data, key: Data) -> Data? {
        try? pool.read { db -> Data? in
            let statement = try db.cachedStatement(sql: lookup)
            guard let row = try Row.fetchOne(statement, arguments: [namespace, key]) else { return nil }
            blackHole((row[1] as Double, row[2] as Double?, row[6] as Int64))
            return row[4] as Data?
        }
    }

    func get(_ count: Int) {
        for _ in 0..<count {
            let data = Self.get(pool, namespace: namespace, key: keys[stream.next()])
            precondition(data != nil, "a present key was not found")
            blackHole(data)
        }
    }

    private var threadRound: UInt64 = 0

    /// `count` random gets on each of `threads` threads at once, each thread with
    /// keys of its own (as `StoreSubject.getOnThreads`).
    func getOnThreads(_ threads: Int, _ count: Int) {
        threadRound &+= 1
        let round = threadRound
        let pool = pool
        let keys = keys
        let namespace = namespace
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            var random = SplitMix(state: round &* 31 &+ UInt64(thread))
            for _ in 0..<count {
                let data = Self.get(pool, namespace: namespace, key: keys[Int(random.next() % UInt64(keys.count))])
                precondition(data != nil, "a present key was not found")
                blackHole(data)
            }
        }
    }

    func close() {
        try? pool.close()
        try? FileManager.default.removeItem(at: directory)
    }
}
