import Testing

@testable import Hoard

/// `_DiskAccessLog`: reads record their access times under the log's lock; a take
/// holds that lock only to move the pending map out and to install what it wrote.
@Suite("Disk access log")
struct DiskAccessLogTests {
    func log(resolution: Double = 60) -> _DiskAccessLog {
        _DiskAccessLog(resolution: resolution, flushCount: 10_000, flushInterval: 1)
    }

    @Test("A take hands back the pending accesses in row id order, once")
    func takeSortsAndEmpties() {
        let log = log()
        for id in [5, 1, 3] as [Int64] { _ = log.record(id: id, now: Double(id), storedAt: 0, epoch: 0) }
        #expect(log.take().map(\.id) == [1, 3, 5])
        #expect(log.isEmpty)
        #expect(log.take().isEmpty)
    }

    @Test("A read of a row being taken, or written within the resolution, is not recorded again")
    func takenRowsCountAsWritten() throws {
        let log = log(resolution: 60)
        _ = log.record(id: 1, now: 0, storedAt: 0, epoch: 0)
        let batch = try #require(log.detachPending())
        #expect(batch.taken.keys.sorted() == [1])
        // Between the two halves of the take: row 1 counts as written at 0.
        _ = log.record(id: 1, now: 10, storedAt: 0, epoch: 0)
        #expect(log.isEmpty)
        // Another row is recorded as usual.
        _ = log.record(id: 2, now: 10, storedAt: 0, epoch: 0)
        #expect(!log.isEmpty)
        log.settle(batch)
        _ = log.record(id: 1, now: 20, storedAt: 0, epoch: 0)
        #expect(log.take().map(\.id) == [2], "row 1 was written at 0, within the resolution")
        // A resolution after its written time, row 1 is recorded again.
        _ = log.record(id: 1, now: 61, storedAt: 0, epoch: 0)
        let again = log.take()
        #expect(again.map(\.id) == [1])
        #expect(again.first?.time == 61)
    }

    @Test("With a resolution of zero every read is recorded")
    func zeroResolutionRecordsEveryRead() {
        let log = log(resolution: 0)
        _ = log.record(id: 1, now: 0, storedAt: 0, epoch: 0)
        #expect(log.take().map(\.id) == [1])
        _ = log.record(id: 1, now: 0, storedAt: 0, epoch: 0)
        #expect(log.take().map(\.id) == [1])
    }
}
