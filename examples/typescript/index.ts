// examples/yaml's program in TypeScript: a VPC whose private subnets reach the internet through a NAT gateway, an
// AWS Batch GPU queue for training and an EKS GPU cluster for inference, from gpuready's component package.
import * as pulumi from "@pulumi/pulumi";
import * as aws from "@pulumi/aws";
import * as gpuready from "@pulumi/gpuready";

const config = new pulumi.Config();
const vpcCidr = config.get("vpcCidr") ?? "10.42.0.0/16";
const adminCidr = config.require("adminCidr");
const maxTrainingVcpus = config.getNumber("maxTrainingVcpus") ?? 192;

const zones = aws.getAvailabilityZonesOutput({ state: "available" }).names;

const vpc = new aws.ec2.Vpc("vpc", {
    cidrBlock: vpcCidr,
    enableDnsHostnames: true,
    enableDnsSupport: true,
    tags: { Name: "gpu-platform" },
});
const gateway = new aws.ec2.InternetGateway("gateway", { vpcId: vpc.id });
const publicSubnet = new aws.ec2.Subnet("public", {
    vpcId: vpc.id,
    cidrBlock: "10.42.0.0/24",
    availabilityZone: zones[0],
    mapPublicIpOnLaunch: true,
    tags: { Name: "gpu-platform-public" },
});
const publicRoutes = new aws.ec2.RouteTable("public-routes", {
    vpcId: vpc.id,
    routes: [{ cidrBlock: "0.0.0.0/0", gatewayId: gateway.id }],
});
new aws.ec2.RouteTableAssociation("public-routes-public", { subnetId: publicSubnet.id, routeTableId: publicRoutes.id });
const natIp = new aws.ec2.Eip("nat-ip", { domain: "vpc" });
const nat = new aws.ec2.NatGateway("nat", { allocationId: natIp.id, subnetId: publicSubnet.id });

const privateSubnets = [["a", "10.42.64.0/18", 0], ["b", "10.42.128.0/18", 1]].map(([zone, cidr, index]) =>
    new aws.ec2.Subnet(`private-${zone}`, {
        vpcId: vpc.id,
        cidrBlock: cidr as string,
        availabilityZone: zones[index as number],
        tags: { Name: `gpu-platform-private-${zone}`, "kubernetes.io/role/internal-elb": "1" },
    }));
const privateRoutes = new aws.ec2.RouteTable("private-routes", {
    vpcId: vpc.id,
    routes: [{ cidrBlock: "0.0.0.0/0", natGatewayId: nat.id }],
});
privateSubnets.forEach((subnet, i) => new aws.ec2.RouteTableAssociation(`private-routes-${"ab"[i]}`, {
    subnetId: subnet.id,
    routeTableId: privateRoutes.id,
}));
const subnetIds = privateSubnets.map(subnet => subnet.id);
const tags = { team: "ml", "cost-center": "ml-platform" };

// Batch: Spot first, on-demand as fallback; at most maxTrainingVcpus per compute environment.
const training = new gpuready.aws.BatchGpuEnvironment("training", {
    instanceTypes: ["g6e.xlarge", "g6e.12xlarge"],
    subnetIds,
    vpcId: vpc.id,
    capacity: ["spot", "on-demand"],
    maxVcpus: maxTrainingVcpus,
    job: { gpus: 4, vcpus: 16, memoryMib: 120000 },
    tags,
});

// EKS: one Spot GPU node group scaled from zero by cluster-autoscaler, the API server reachable from adminCidr only.
const inference = new gpuready.aws.EksGpuCluster("inference", {
    subnetIds,
    cluster: { publicAccessCidrs: [adminCidr] },
    nodeGroup: { instanceTypes: ["g6e.xlarge", "g6e.2xlarge"], capacityType: "SPOT", maxSize: 4 },
    tags,
});

export const jobQueueName = training.jobQueueName;
export const jobQueueArn = training.jobQueueArn;
export const trainingMaxGpus = training.maxTotalGpus;
export const clusterName = inference.clusterName;
export const kubeconfig = inference.kubeconfig;
export const inferenceMaxGpus = inference.maxGpus;
