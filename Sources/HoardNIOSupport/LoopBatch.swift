#if Redis || Postgres
/// Items handed to an event loop in batches: the first item of a batch asks for one
/// loop task, and that task takes every item queued by the time it runs. A burst of
/// items from any number of threads so costs one loop task, not one each.
///
/// The value is kept behind its owner's lock. The arrays are reused: a taken batch
/// goes back through ``recycle(_:)``, so a steady stream of batches allocates nothing.
///
/// What it guarantees: ``take()`` returns the items in the order they were
/// appended, each once; after a `take()`, the next ``append(_:)`` asks for a task again.
package struct LoopBatch<Element> {
    private var items: [Element] = []
    private var spare: [Element] = []
    private var isScheduled = false

    /// An empty queue.
    package init() {}

    /// Queues `item`; `true` when it is the first of a batch, and the caller must
    /// schedule the loop task that takes the batch.
    package mutating func append(_ item: Element) -> Bool {
        items.append(item)
        guard !isScheduled else { return false }
        isScheduled = true
        return true
    }

    /// Every item queued so far, in order; the queue keeps the spare array (empty,
    /// with capacity) for the next batch.
    package mutating func take() -> [Element] {
        isScheduled = false
        var batch: [Element] = []
        swap(&batch, &spare)
        swap(&batch, &items)
        return batch
    }

    /// Gives back a batch ``take()`` returned, once its items are handled, so that its
    /// storage serves a later batch; `batch` is left empty. Batches are taken and
    /// handled one at a time on the loop, so the spare is empty then.
    package mutating func recycle(_ batch: inout [Element]) {
        batch.removeAll(keepingCapacity: true)
        swap(&spare, &batch)
    }
}
#endif
