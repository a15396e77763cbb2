package io.pgdurable.longpoll;

import java.time.Duration;

/** Two observers told every moment in turn (see {@link LongPollSignals#both}). */
final class SignalsPair implements LongPollSignals {
    private final LongPollSignals first;
    private final LongPollSignals second;

    SignalsPair(LongPollSignals first, LongPollSignals second) {
        this.first = first;
        this.second = second;
    }

    @Override
    public void listening(boolean reconnect) {
        first.listening(reconnect);
        second.listening(reconnect);
    }

    @Override
    public void connectionLost(Throwable cause) {
        first.connectionLost(cause);
        second.connectionLost(cause);
    }

    @Override
    public void backoff(int failures, Duration delay) {
        first.backoff(failures, delay);
        second.backoff(failures, delay);
    }

    @Override
    public void notification(String payload) {
        first.notification(payload);
        second.notification(payload);
    }

    @Override
    public void scanFinished(boolean timedOut) {
        first.scanFinished(timedOut);
        second.scanFinished(timedOut);
    }

    @Override
    public void fallbackPoll() {
        first.fallbackPoll();
        second.fallbackPoll();
    }

    @Override
    public void leaseEndsVerified(int dropped) {
        first.leaseEndsVerified(dropped);
        second.leaseEndsVerified(dropped);
    }

    @Override
    public void waiterWoken(String queue) {
        first.waiterWoken(queue);
        second.waiterWoken(queue);
    }

    @Override
    public void waiterWoken(QueueKind queue, WakeSource source) {
        first.waiterWoken(queue, source);
        second.waiterWoken(queue, source);
    }

    @Override
    public void uselessWake(QueueKind queue) {
        first.uselessWake(queue);
        second.uselessWake(queue);
    }

    @Override
    public void capacityRefused(QueueKind queue) {
        first.capacityRefused(queue);
        second.capacityRefused(queue);
    }

    @Override
    public void claimSkipped(String queue) {
        first.claimSkipped(queue);
        second.claimSkipped(queue);
    }

    @Override
    public void announced(int payloads) {
        first.announced(payloads);
        second.announced(payloads);
    }

    @Override
    public void announcedInline(int payloads) {
        first.announcedInline(payloads);
        second.announcedInline(payloads);
    }

    @Override
    public void announcementsQueued(int hints) {
        first.announcementsQueued(hints);
        second.announcementsQueued(hints);
    }

    @Override
    public void announcementsUnheard(int payloads) {
        first.announcementsUnheard(payloads);
        second.announcementsUnheard(payloads);
    }

    @Override
    public void announceFailed(int payloads) {
        first.announceFailed(payloads);
        second.announceFailed(payloads);
    }

    @Override
    public void takersRegistered(int waiting) {
        first.takersRegistered(waiting);
        second.takersRegistered(waiting);
    }

    @Override
    public void handOffReceived(boolean taken) {
        first.handOffReceived(taken);
        second.handOffReceived(taken);
    }

    @Override
    public void handOffsHeld(int items) {
        first.handOffsHeld(items);
        second.handOffsHeld(items);
    }
}
