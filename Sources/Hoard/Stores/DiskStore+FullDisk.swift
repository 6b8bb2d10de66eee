import Foundation

/// What a store does when its disk is full.
///
/// Removing must work on a full disk, as it is how space is made. SQLite records a
/// deletion by appending pages to the index's write-ahead log, which cannot grow
/// on a full disk, so a removal that fails with ``HoardError/Code/storageFull``
/// makes room and is tried once more:
///
/// 1. the value files of the entries it removes are deleted first (their rows then
///    name missing files only if the second try fails too: reads and
///    ``DiskStore/verify(repairing:)`` treat such rows as damage);
/// 2. the store's reserve file (``_SpaceReserve``) is deleted;
/// 3. the log is checkpointed into the database and truncated, which gives its
///    space back.
///
/// After a removal that freed space, the log is checkpointed and truncated again
/// and the reserve grown back. A write that fails with `storageFull` is tried once
/// more after a checkpoint too (never with the reserve): after removals, the
/// database has free pages a write can reuse, but the log still takes the disk.
extension DiskStore {
    /// Runs `operation`, which removes entries; when it fails with
    /// ``HoardError/Code/storageFull``, makes room as the extension's overview says
    /// and runs it once more.
    ///
    /// - Parameters:
    ///   - files: The value files `operation` releases, deleted first to make room.
    ///   - operation: The removal; it takes the store's lock itself.
    /// - Throws: What the second try throws. Failures of the steps that make room
    ///   are reported as ``DiskStoreEvent/failed(operation:namespace:key:error:)``.
    func freeingSpace<R>(
        releasing files: () throws(HoardError) -> [String], _ operation: () throws(HoardError) -> R
    ) throws(HoardError) -> R {
        do {
            return try operation()
        } catch  where error.code == .storageFull {
            var events: [DiskStoreEvent] = []
            do {
                for file in try files() {
                    do {
                        try blobs.remove(file)
                    } catch {
                        events.append(
                            .failed(
                                operation: "delete a value file to make room on a full disk", namespace: nil, key: nil,
                                error: error))
                    }
                }
            } catch {
                events.append(
                    .failed(
                        operation: "list the value files to delete on a full disk", namespace: nil, key: nil,
                        error: error))
            }
            do {
                try reserve.release()
            } catch {
                events.append(
                    .failed(operation: "release the full-disk reserve", namespace: nil, key: nil, error: error))
            }
            checkpoint(events: &events)
            let result: R
            do {
                result = try operation()
            } catch {
                observers.publish(events)
                throw error
            }
            checkpoint(events: &events)
            do {
                try reserve.restore()
            } catch  where error.code == .storageFull {
                // Expected while the disk is still full: grown back after the next
                // removal that frees space, or at the next open.
            } catch {
                events.append(
                    .failed(operation: "restore the full-disk reserve", namespace: nil, key: nil, error: error))
            }
            observers.publish(events)
            return result
        }
    }

    /// Runs `operation`, which writes; when it fails with
    /// ``HoardError/Code/storageFull``, checkpoints and truncates the index's log
    /// and, when that finished, runs it once more.
    ///
    /// - Throws: What `operation` throws (the second time, when it ran twice).
    func retryingAfterCheckpoint<R>(_ operation: () throws(HoardError) -> R) throws(HoardError) -> R {
        do {
            return try operation()
        } catch  where error.code == .storageFull {
            let finished: Bool
            do {
                finished = try state.withLock { (state) throws(HoardError) in
                    try state.open().connection.checkpointAndTruncate()
                }
            } catch let failure {
                // The write's error is the one to throw. A checkpoint that failed for
                // the same reason (the database cannot grow on the full disk) says
                // nothing more; any other failure is reported.
                if failure.code != .storageFull {
                    observers.publish([
                        .failed(
                            operation: "checkpoint the index to make room on a full disk", namespace: nil, key: nil,
                            error: failure)
                    ])
                }
                throw error
            }
            guard finished else { throw error }
            return try operation()
        }
    }

    /// Checkpoints the index's log and truncates it; a failure is added to `events`.
    private func checkpoint(events: inout [DiskStoreEvent]) {
        do {
            _ = try state.withLock { (state) throws(HoardError) in
                try state.open().connection.checkpointAndTruncate()
            }
        } catch {
            events.append(
                .failed(
                    operation: "checkpoint the index to make room on a full disk", namespace: nil, key: nil,
                    error: error))
        }
    }
}
