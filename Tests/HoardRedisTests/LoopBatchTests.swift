#if Redis
import HoardNIOSupport
import Testing

/// `LoopBatch`, the queue behind the task executor's job batches and a Redis
/// connection's write batches.
@Suite("LoopBatch")
struct LoopBatchTests {
    @Test(
        "The first item of a batch asks for a task, the rest do not; take returns them in order, then the next item asks again"
    )
    func batches() {
        var queue = LoopBatch<Int>()
        let asked = [queue.append(1), queue.append(2), queue.append(3)]
        #expect(asked == [true, false, false])
        var batch = queue.take()
        #expect(batch == [1, 2, 3])
        let askedAgain = [queue.append(4), queue.append(5)]
        #expect(askedAgain == [true, false], "a taken batch makes the next item ask again")
        queue.recycle(&batch)
        #expect(batch.isEmpty)
        let next = queue.take()
        #expect(next == [4, 5])
        let empty = queue.take()
        #expect(empty.isEmpty)
    }

    @Test("A recycled batch's storage serves the batch after next")
    func reusesStorage() {
        var queue = LoopBatch<Int>()
        for value in 0..<100 { _ = queue.append(value) }
        var first = queue.take()
        let capacity = first.capacity
        queue.recycle(&first)
        _ = queue.append(1)
        var second = queue.take()  // the array filled since; the recycled one is now the queue's
        queue.recycle(&second)
        _ = queue.append(2)
        let third = queue.take()
        #expect(third == [2])
        #expect(third.capacity >= capacity, "the first batch's storage came back")
    }
}
#endif
