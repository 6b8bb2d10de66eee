/// How a remote store splits a batch of ``CacheStoreWrite``s into the steps it sends.
extension CacheStoreWrite {
    /// One step of applying a batch: a namespace cleared on its own, or a run of sets
    /// and removals sent together.
    package enum Round: Equatable {
        /// A ``CacheStoreWrite/removeAll(in:)``, which runs after the changes before it
        /// and before those after it.
        case removeAll(String)
        /// Sets and removals, in the batch's order; never empty.
        case changes(ArraySlice<CacheStoreWrite>)
    }

    /// Splits `batch` into the steps that apply it in order: each `removeAll` alone,
    /// and the sets and removals between them in runs of at most `maximumChanges`
    /// changes. A run also ends once the values it sets add up to `maximumBytes` or
    /// more, so it may pass that by one value; it always holds at least one change.
    ///
    /// - Complexity: O(*n*) in the batch's length.
    package static func rounds(
        of batch: [CacheStoreWrite], maximumChanges: Int, maximumBytes: Int = .max
    ) -> [Round] {
        precondition(maximumChanges > 0, "a round holds at least one change")
        var rounds: [Round] = []
        var start = batch.startIndex
        while start < batch.endIndex {
            if case .removeAll(let namespace) = batch[start] {
                rounds.append(.removeAll(namespace))
                start += 1
                continue
            }
            var end = start
            var bytes = 0
            while end < batch.endIndex, end - start < maximumChanges, bytes < maximumBytes {
                let change = batch[end]
                if case .removeAll = change { break }
                if case .set(let data, _, _, _, _) = change { bytes += data.count }
                end += 1
            }
            rounds.append(.changes(batch[start..<end]))
            start = end
        }
        return rounds
    }
}
