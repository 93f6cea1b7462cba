package main

import (
	"sync"
	"time"
)

// pollLimiter is the tasks/get rate limit of each task this process
// answers for: a token bucket of burst polls, refilled one per the task's
// poll interval. Buckets that would be full again carry no information and
// are dropped when the map grows. Safe for concurrent use.
type pollLimiter struct {
	burst int // set once by newTaskManager

	mu      sync.Mutex
	buckets map[string]*pollBucket
	pruneAt int // prune when the map reaches this size
}

type pollBucket struct {
	tokens   float64
	at       time.Time // when tokens was counted
	interval time.Duration
}

// minPollPrune is the smallest map size at which full buckets are dropped.
const minPollPrune = 1024

// allow takes a poll of task id, polled every interval at most, at now; it
// reports false (and takes nothing) when the task's bucket is empty.
func (l *pollLimiter) allow(id string, interval time.Duration, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[id]
	if b == nil {
		if len(l.buckets) >= max(l.pruneAt, minPollPrune) {
			l.prune(now)
		}
		if l.buckets == nil {
			l.buckets = map[string]*pollBucket{}
		}
		b = &pollBucket{tokens: float64(l.burst), at: now, interval: interval}
		l.buckets[id] = b
	}
	b.refill(now, l.burst)
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

func (b *pollBucket) refill(now time.Time, burst int) {
	if b.interval > 0 && now.After(b.at) {
		b.tokens = min(float64(burst), b.tokens+float64(now.Sub(b.at))/float64(b.interval))
	} else if b.interval <= 0 {
		b.tokens = float64(burst)
	}
	b.at = now
}

// prune drops the buckets that are full by now; l.mu is held.
func (l *pollLimiter) prune(now time.Time) {
	for id, b := range l.buckets {
		if b.refill(now, l.burst); b.tokens >= float64(l.burst) {
			delete(l.buckets, id)
		}
	}
	l.pruneAt = 2 * len(l.buckets)
}
