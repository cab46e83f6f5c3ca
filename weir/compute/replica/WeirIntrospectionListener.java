// The JVM half of weir's introspection listener (weir/compute/replica/spark_listener.py).
// Compiled at run time with Janino, which Spark ships, so weir needs no build step.
//
// Spark's listener bus calls a listener for every event; a Python (py4j) listener costs
// a JVM -> Python round trip per event, needed or not. This one keeps, as JSON from
// Spark's own JsonProtocol, only the events weir reads (task ends, job starts, SQL
// execution start/end, re-plans, driver metric updates, task starts and the heartbeats
// carrying running tasks' metrics), in a bounded queue that the
// replica's introspection thread drains once per interval with one call.
// Janino compiles Java without generics' checks: raw types and casts on purpose.

import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.spark.SparkConf;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.scheduler.SparkListenerExecutorMetricsUpdate;
import org.apache.spark.scheduler.SparkListenerJobStart;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.SparkListenerTaskStart;
import org.apache.spark.util.JsonProtocol;
import org.apache.spark.util.JsonProtocolOptions;

public class WeirIntrospectionListener extends SparkListener {
    private static final String SQL = "org.apache.spark.sql.execution.ui.";

    private final ConcurrentLinkedQueue queue = new ConcurrentLinkedQueue();
    private final AtomicInteger queued = new AtomicInteger();
    private final AtomicLong dropped = new AtomicLong();
    private final AtomicLong failed = new AtomicLong();
    private final int capacity;
    private final JsonProtocolOptions options;
    // task starts and heartbeats are kept only while a dataflow hydrates (hydration progress)
    private volatile boolean live = false;

    public WeirIntrospectionListener(int capacity) {
        this.capacity = capacity;
        // internal task-metric accumulators repeat "Task Metrics": leave them out
        SparkConf conf = new SparkConf(false).set("spark.eventLog.includeTaskMetricsAccumulators", "false");
        this.options = new JsonProtocolOptions(conf);
    }

    private void keep(SparkListenerEvent event) {
        if (queued.get() >= capacity) {
            dropped.incrementAndGet();
            return;
        }
        try {
            queue.add(JsonProtocol.sparkEventToJsonString(event, options));
            queued.incrementAndGet();
        } catch (Throwable t) {
            failed.incrementAndGet();
        }
    }

    public void onTaskEnd(SparkListenerTaskEnd event) {
        keep(event);
    }

    public void onJobStart(SparkListenerJobStart event) {
        keep(event);
    }

    // which partition a running task works on (heartbeats name tasks by id only)
    public void onTaskStart(SparkListenerTaskStart event) {
        if (live) {
            keep(event);
        }
    }

    // a running task's SQL metrics so far, once per executor heartbeat: live progress
    public void onExecutorMetricsUpdate(SparkListenerExecutorMetricsUpdate event) {
        if (live && !event.accumUpdates().isEmpty()) {
            keep(event);
        }
    }

    public void onOtherEvent(SparkListenerEvent event) {
        String name = event.getClass().getName();
        if (name.equals(SQL + "SparkListenerSQLExecutionStart")
                || name.equals(SQL + "SparkListenerSQLExecutionEnd")
                || name.equals(SQL + "SparkListenerSQLAdaptiveExecutionUpdate")
                || name.equals(SQL + "SparkListenerDriverAccumUpdates")) {
            keep(event);
        }
    }

    /** Keep task starts and heartbeats (something hydrates) or not. */
    public void setLive(boolean on) {
        live = on;
    }

    /** Every kept event since the last drain, one JSON document per line, in order. */
    public String drain() {
        StringBuilder out = new StringBuilder();
        Object json;
        while ((json = queue.poll()) != null) {
            queued.decrementAndGet();
            out.append((String) json).append('\n');
        }
        return out.toString();
    }

    /** Events not kept: the queue was full (nobody drained it) or JSON failed. */
    public long dropped() {
        return dropped.get() + failed.get();
    }
}
