// SPDX-License-Identifier: Apache-2.0
// PartitionOf.java -- the Java client's side of t530 (F20): run with the
// kafka-clients jar on the class path (java -cp JAR PartitionOf.java).
//
//   PartitionOf create BOOTSTRAP TOPIC PARTITIONS   creates the topic
//   PartitionOf partition PARTITIONS < keys          prints "key<TAB>partition"
//
// The partition is what the Java producer's default partitioner picks
// for a keyed record: toPositive(murmur2(key bytes)) % partitions, from
// the client's own Utils (the same code its partitioner calls).
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.utils.Utils;

public class PartitionOf {
	public static void main(String[] args) throws Exception {
		if (args.length == 4 && args[0].equals("create")) {
			Properties p = new Properties();
			p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[1]);
			try (Admin admin = Admin.create(p)) {
				admin.createTopics(List.of(new NewTopic(args[2],
					Integer.parseInt(args[3]), (short) 1))).all().get();
			}
			return;
		}
		if (args.length == 2 && args[0].equals("partition")) {
			int n = Integer.parseInt(args[1]);
			BufferedReader in = new BufferedReader(
				new InputStreamReader(System.in, StandardCharsets.UTF_8));
			StringBuilder out = new StringBuilder();
			for (String key; (key = in.readLine()) != null;) {
				byte[] b = key.getBytes(StandardCharsets.UTF_8);
				out.append(key).append('\t')
				   .append(Utils.toPositive(Utils.murmur2(b)) % n).append('\n');
			}
			System.out.print(out);
			return;
		}
		System.err.println("usage: PartitionOf create BOOTSTRAP TOPIC N | partition N < keys");
		System.exit(2);
	}
}
