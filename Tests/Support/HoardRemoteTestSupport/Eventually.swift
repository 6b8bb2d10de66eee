#if Redis || Postgres
/// Polls `condition` until it holds, or until `timeout` has passed and it has been
/// polled `timeout / interval` times.
///
/// Counting polls as well as time keeps a test from failing on a machine so busy that
/// its tasks do not run for a while (a long synchronous test can hold every thread of
/// the concurrency pool): the time runs out only while the polls get to run.
///
/// - Returns: `true` as soon as `condition` holds; `false` when it never did, or the
///   task was cancelled.
public func eventually(
    timeout: Duration = .seconds(30), every interval: Duration = .milliseconds(20),
    _ condition: () async throws -> Bool
) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    let minimumPolls = Int(timeout / interval)
    var polls = 0
    while ContinuousClock.now < deadline || polls < minimumPolls {
        if try await condition() { return true }
        polls += 1
        if Task.isCancelled { return false }
        try? await Task.sleep(for: interval)
    }
    return false
}
#endif
