import Dispatch

/// Taking, using and letting go of the append lease (see ``_LogLease``).
extension MessageLog {
    /// Runs `body` under the instance's mutex with the append lease held, taking it
    /// first when needed, with the exact header to append after; what `body` leaves in
    /// the lease and the header is kept when it returns.
    ///
    /// `body` must call ``_abandonLease(_:)`` before it throws once it has written
    /// anything; an error before that leaves the lease as it was.
    ///
    /// - Throws: What taking the lease throws (``HoardError/Code/fileNotWritable``,
    ///   ``HoardError/Code/fileCorrupted``, I/O errors), and what `body` throws.
    func _withLease<T>(
        _ body: (inout _LogState, inout _LogLease, inout _LogHeader) throws(HoardError) -> T
    ) throws(HoardError) -> T {
        try state.withLock { (state: inout _LogState) throws(HoardError) -> T in
            if let lease = state.lease, leaseExpiry.load(ordering: .relaxed) == lease.generation {
                _endLease(&state)
            }
            var (lease, header) = try _currentLease(&state)
            let result = try body(&state, &lease, &header)
            state.lease = lease
            state.trusted = header
            return result
        }
    }

    /// The lease held, or a new one.
    private func _currentLease(_ state: inout _LogState) throws(HoardError) -> (_LogLease, _LogHeader) {
        if let lease = state.lease, let header = state.trusted { return (lease, header) }
        return try _takeLease(&state)
    }

    /// Takes the exclusive file lock, settles and checks the header, and writes it back
    /// with the lease flag set; schedules the lease's release.
    private func _takeLease(_ state: inout _LogState) throws(HoardError) -> (_LogLease, _LogHeader) {
        try state.file.lock(exclusive: true)
        do throws(HoardError) {
            var header = try _readLockedHeader(&state, persistingSettlement: true)
            guard state.isWritable else { throw _notWritable(header, file: state.file) }
            header = try Self._checkLastAppend(header, state: &state, durability: durability, log: log)
            var checkpoint = header
            checkpoint.isLeased = true
            try state.file.writeHeader(checkpoint)
            state.trusted = header
            state.leaseGeneration &+= 1
            let lease = _LogLease(generation: state.leaseGeneration)
            state.lease = lease
            leaseHeld.store(lease.generation, ordering: .relaxed)
            _scheduleLeaseRelease(generation: lease.generation, after: _LogLease.duration)
            return (lease, header)
        } catch {
            state.trusted = nil
            state.file.unlock()
            throw error
        }
    }

    /// Lets the lease go, if held: writes the exact header with the lease flag cleared,
    /// then releases the file lock.
    ///
    /// Should that write fail, the file keeps its checkpoint, whose lease flag makes
    /// the next reader or holder count the records appended after it: nothing is lost,
    /// and the instance re-reads the header next time.
    func _endLease(_ state: inout _LogState) {
        guard state.lease != nil else { return }
        state.lease = nil
        leaseHeld.store(0, ordering: .relaxed)
        if let header = state.trusted {
            do throws(HoardError) {
                try state.file.writeHeader(header)
            } catch {
                state.trusted = nil  // the checkpoint stays; see above
                log.leaseHeaderNotWritten(error)
            }
        }
        state.file.unlock()
    }

    /// Lets the lease go after a failed write, leaving the file's checkpoint for the
    /// next holder to settle.
    func _abandonLease(_ state: inout _LogState) {
        guard state.lease != nil else { return }
        state.lease = nil
        leaseHeld.store(0, ordering: .relaxed)
        state.trusted = nil
        state.window = nil
        state.file.unlock()
    }

    /// Lets the lease of `generation` go after `delay`, unless it is gone by then.
    private func _scheduleLeaseRelease(generation: UInt64, after delay: DispatchTimeInterval) {
        DispatchQueue.global().asyncAfter(deadline: .now() + delay) { [weak self] in
            self?._releaseExpiredLease(generation)
        }
    }

    /// Marks the lease of `generation` expired and lets it go when the mutex is free;
    /// when it is not, the next append lets the lease go itself, and the timer tries
    /// again a lease's time later in case there is no next append.
    private func _releaseExpiredLease(_ generation: UInt64) {
        guard leaseHeld.load(ordering: .relaxed) == generation else { return }
        leaseExpiry.store(generation, ordering: .relaxed)
        let done: Bool? = state.withLockIfAvailable { state in
            if state.lease?.generation == generation { _endLease(&state) }
            return true
        }
        if done == nil { _scheduleLeaseRelease(generation: generation, after: _LogLease.duration) }
    }

    /// `header`, or when its lease flag is set, the header with the records its writer
    /// appended after it counted (``_LogHeader/settled(file:)``). With `persist`, under
    /// the exclusive lock of an instance that may write the log, the settled header is
    /// written after the free bytes past its records are zeroed.
    static func _settle(
        _ header: _LogHeader, file: _LogFile, persist: Bool, durability: Durability
    ) throws(HoardError) -> _LogHeader {
        guard header.isLeased else { return header }
        let settlement = try header.settled(file: file)
        if persist {
            for range in settlement.stale { try file.zero(range) }
            try file.writeHeader(settlement.header)
            if durability == .fsync { try file.synchronize() }
        }
        return settlement.header
    }
}
